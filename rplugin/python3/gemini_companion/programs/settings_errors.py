"""The two ways a settings edit (settings_edit.py) stops: refused with a one-line reason, or started
over because the file changed under it. Standard library only."""

from __future__ import annotations


class Refused(Exception):
    """A one-line reason; nothing was changed."""


class Changed(Exception):
    """The settings file is no longer what the edit was made on: start over."""
