"""Chapter 9's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch9")
BOTH = ("quick", "full")
