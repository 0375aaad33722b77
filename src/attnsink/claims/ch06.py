"""Chapter 6's claims. See :mod:`attnsink.claims`."""

from __future__ import annotations

from .base import Chapter

CHAPTER = Chapter("ch6")
BOTH = ("quick", "full")
