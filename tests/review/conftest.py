"""Fixtures the review tests share: a review through the real Gemini IDE client."""

from __future__ import annotations

import pytest

from conftest import Editor, NodeClient
from review.helpers import Review


@pytest.fixture
def review(editor: Editor, gemini: NodeClient) -> Review:
    return Review(editor, gemini)
