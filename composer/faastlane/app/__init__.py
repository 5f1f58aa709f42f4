"""An app as the developer hands it over, read and checked: an app folder (``folder``) or
a SAM / CloudFormation project (``project``), chosen between by ``sources.load_app``."""
