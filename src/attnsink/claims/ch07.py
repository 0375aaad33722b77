"""Chapter 7's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch7")
BOTH = ("quick", "full")
