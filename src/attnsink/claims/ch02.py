"""Chapter 2's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch2")
BOTH = ("quick", "full")
