"""What APP names: an app folder (``folder``) or a SAM / CloudFormation template file
(``project``, which builds on ``folder``'s model; so the choice is made here, above both)."""

from __future__ import annotations

import os

from faastlane.app.project.app_model import load_project
from faastlane.app.project.parameters import ProjectOptions

from .folder import App, load_folder


def load_app(path: str, options: ProjectOptions | None = None) -> App:
    """Read an app folder, or a template file (``options`` say which state machine,
    parameters and stack name); problems are collected."""
    if os.path.isfile(path):
        return load_project(path, options)
    return load_folder(path)
