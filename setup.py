"""Packaging for Faastlane: the ``faastlane`` package lives under ``composer/``."""

from setuptools import find_packages, setup

setup(
    name="faastlane",
    version="0.1.0",
    description="Compile AWS Step Functions workflows of Python FaaS functions into one "
    "fast, isolated action for OpenWhisk and AWS Lambda",
    package_dir={"": "composer"},
    packages=find_packages("composer"),
    include_package_data=True,
    package_data={"faastlane": ["codegen/templates/*"]},
    python_requires=">=3.11",
    install_requires=[],
    extras_require={
        "test": [
            "pytest>=8",
            "moto[stepfunctions,awslambda,server]>=5.1",
            "boto3>=1.34",
        ],
    },
    entry_points={"console_scripts": ["faastlane = faastlane.cli:main"]},
)
