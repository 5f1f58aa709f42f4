"""The paper-comparison benchmark harness, a distribution of its own (not part of the
``faastlane`` product): ``pip install -e bench`` adds ``faastlane bench`` and
``faastlane cost`` to the CLI of a checkout."""

from setuptools import setup

EXAMPLES = ["boto3>=1.34", "numpy>=2", "Pillow>=10", "scikit-learn>=1.5", "vaderSentiment>=3.3"]

setup(
    name="faastlane-bench",
    version="0.1.0",
    description="Faastlane's benchmark harness: the paper's systems compared on the examples",
    packages=["faastlane_bench"],
    package_data={"faastlane_bench": ["prices.json"]},
    python_requires=">=3.11",
    # The baselines (moto's Step Functions, S3 via moto_server, boto3) and the plots.
    install_requires=["faastlane", "matplotlib>=3.8",
                      "moto[stepfunctions,awslambda,server]>=5.1", *EXAMPLES],
    entry_points={"faastlane.commands": ["bench = faastlane_bench.commands"]},
)
