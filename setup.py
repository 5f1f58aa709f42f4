"""Packaging for Faastlane: the ``faastlane`` package lives under ``composer/``."""

from setuptools import find_packages, setup

EXAMPLES = [
    "boto3>=1.34",
    "numpy>=2",
    "Pillow>=10",
    "scikit-learn>=1.5",
    "vaderSentiment>=3.3",
    # Not imported by any function: the local DynamoDB/SNS/SQS endpoint that
    # examples/local-aws/start runs for the healthcare and sentiment examples.
    "moto[server]>=5.1",
]

setup(
    name="faastlane",
    version="0.1.0",
    description="Compile AWS Step Functions workflows of Python FaaS functions into one "
    "fast, isolated action for OpenWhisk and AWS Lambda",
    # profiler/ (top level by design) installs as the faastlane_profiler package, and
    # bench/faastlane_bench (`faastlane bench APP`, `faastlane cost APP`) as itself.
    package_dir={"": "composer", "faastlane_profiler": "profiler",
                 "faastlane_bench": "bench/faastlane_bench",
                 "faastlane_bench.systems": "bench/faastlane_bench/systems"},
    packages=find_packages("composer") + ["faastlane_profiler", "faastlane_bench",
                                          "faastlane_bench.systems"],
    include_package_data=True,
    # Run-time files that are not Python: the gate's C source, which `faastlane inspect`
    # compiles (copies of cpython-mpk/Modules/, checked identical by the tests), and the
    # prices `faastlane cost` uses.
    package_data={"faastlane.inspector": ["gate_source/*.c", "gate_source/*.h"],
                  "faastlane_bench": ["prices.json"]},
    python_requires=">=3.11",
    # JSONata workflows: the engine is imported only when a state uses JSONata, and
    # `faastlane compose` copies it into those actions (pure Python, Apache-2.0).
    # The binary inspector (compose/package/deploy and `faastlane inspect`) reads ELF
    # files with pyelftools and shows findings disassembled with capstone.
    # `faastlane graph` draws PNGs with Pillow (wheels carry FreeType and a font; the SVG
    # is written directly and sized with the same font's metrics).
    # Progress of long operations on a terminal (faastlane/progress.py): rich. The
    # baselines `faastlane bench APP` measures a user's workflow against: moto's Step
    # Functions engine and its S3 server (with boto3); moto's server is also the local AWS
    # `faastlane run TEMPLATE` starts when no endpoint is set. SAM / CloudFormation
    # templates and YAML definitions are read with PyYAML at compose time (the action
    # itself gets JSON: its runtime stays standard-library only).
    install_requires=["jsonata-python>=0.7.1,<0.8", "pyelftools>=0.31", "capstone>=5",
                      "Pillow>=10.1", "rich>=13", "moto[stepfunctions,awslambda,server]>=5.1",
                      "PyYAML>=6"],
    extras_require={
        # What the example applications' functions import (they run unmodified, as on
        # Lambda, where these would come from the deployment package or a layer).
        "examples": EXAMPLES,
        # `faastlane deploy --target lambda` talks to AWS through boto3.
        "deploy": ["boto3>=1.34"],
        # Workflows whose Task states call AWS services (runtime/services/): the action
        # imports boto3 only then (Lambda's Python runtime has it).
        "aws": ["boto3>=1.34"],
        "test": [
            "pytest>=8",
            # Property tests (any state name composes and runs; fuzzed inputs).
            "hypothesis>=6",
            "moto[stepfunctions,awslambda,server]>=5.1",
            # The real Lambda Runtime API client, driving packaged functions in tests.
            "awslambdaric>=3",
            # tests/bench draws the benchmark's figures.
            "matplotlib>=3.8",
            *EXAMPLES,
        ],
    },
    entry_points={
        "console_scripts": ["faastlane = faastlane.cli:main"],
        # `faastlane profile` (the profiler imports faastlane, never the reverse).
        "faastlane.commands": ["profile = faastlane_profiler.command",
                               "bench = faastlane_bench.commands"],
    },
)
