"""Amazon States Language: loading ``workflow.json`` and validating it.

``load_definition`` parses the text strictly (syntax errors, duplicate keys);
``validate`` reports every problem in a parsed definition, each as a :class:`Problem`
with an RFC 6901 JSON pointer.
"""

from .load import load_definition
from .problem import Problem
from .validate import validate

__all__ = ["Problem", "load_definition", "validate"]
