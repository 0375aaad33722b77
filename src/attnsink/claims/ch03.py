"""Chapter 3's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch3")
BOTH = ("quick", "full")
