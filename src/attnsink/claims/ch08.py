"""Chapter 8's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch8")
BOTH = ("quick", "full")
