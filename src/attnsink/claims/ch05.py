"""Chapter 5's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch5")
BOTH = ("quick", "full")
