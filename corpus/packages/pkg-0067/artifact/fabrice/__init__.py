"""High level SSH command execution."""

from .connection import Connection
from . import _aws

_aws.sync()
