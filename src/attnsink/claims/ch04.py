"""Chapter 4's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch4")
BOTH = ("quick", "full")
