"""The platforms' size limits, checked before anything is uploaded.

OpenWhisk (default deployment limits): an invocation's parameters and an action's result
at most 1 MB; an action's code at most 48 MB. AWS Lambda: a synchronous invocation's
request and response at most 6 MB; a zip uploaded directly at most 50 MB; a function and
all its layers at most 250 MB unzipped; a container image at most 10 GB uncompressed,
all layers counted. The hints name the way out: a container image (``--docker`` for
OpenWhisk, ``--image`` for Lambda) holds the dependencies instead of the zip.
"""

from __future__ import annotations

from dataclasses import dataclass

from faastlane.runtime.parallel.invokers import LAMBDA_PAYLOAD_LIMIT, OPENWHISK_PAYLOAD_LIMIT

from .errors import TooLarge

MB = 1024 * 1024


@dataclass(frozen=True)
class Limit:
    what: str
    limit: int
    hint: str

    def check(self, size: int, subject: str) -> None:
        """Raise TooLarge naming the subject, its size and the limit."""
        if size > self.limit:
            raise TooLarge(f"{subject} is {_megabytes(size)}, over {self.what} of "
                           f"{_megabytes(self.limit)}; {self.hint}")


def _megabytes(size: int) -> str:
    return f"{size / MB:.2f} MB" if size % MB else f"{size // MB} MB"


OPENWHISK_PAYLOAD = Limit("OpenWhisk's limit for an invocation's parameters",
                          OPENWHISK_PAYLOAD_LIMIT,
                          "pass a reference to the data (e.g. an object-store key) instead")
OPENWHISK_CODE = Limit("OpenWhisk's limit for an action's code", 48 * MB,
                       "deploy it as a Docker action instead (--docker: the requirements "
                       "go into an image derived from the runtime image, not the zip)")
LAMBDA_SYNC_PAYLOAD = Limit("Lambda's limit for a synchronous invocation's payload",
                            LAMBDA_PAYLOAD_LIMIT,
                            "pass a reference to the data (e.g. an S3 key) instead")
LAMBDA_ZIP = Limit("Lambda's limit for a directly uploaded zip", 50 * MB,
                   "deploy a container image instead (--image: up to 10 GB; "
                   "uploads through S3 are not implemented)")
LAMBDA_UNZIPPED = Limit("Lambda's limit for a function and its layers unzipped", 250 * MB,
                        "deploy a container image instead (--image: up to 10 GB), or "
                        "trim the dependencies")
LAMBDA_IMAGE = Limit("Lambda's limit for a container image, uncompressed", 10 * 1024 * MB,
                     "trim the dependencies or use a smaller base image")
