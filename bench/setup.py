"""What the paper-comparison benchmark of the examples needs besides ``faastlane``: the
harness itself (``faastlane_bench``, with ``faastlane bench`` and ``faastlane cost``) ships
in the ``faastlane`` distribution, so that ``faastlane bench APP`` works from a plain
``pip install .``; ``pip install -e bench`` adds the plots' and the examples' libraries."""

from setuptools import setup

EXAMPLES = ["boto3>=1.34", "numpy>=2", "Pillow>=10", "scikit-learn>=1.5", "vaderSentiment>=3.3"]

setup(
    name="faastlane-bench",
    version="0.1.0",
    description="Faastlane's benchmark harness: the paper's systems compared on the examples",
    packages=[],
    python_requires=">=3.11",
    # The baselines (moto's Step Functions, S3 via moto_server, boto3) and the plots.
    install_requires=["faastlane", "matplotlib>=3.8",
                      "moto[stepfunctions,awslambda,server]>=5.1", *EXAMPLES],
)
