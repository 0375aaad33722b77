"""What a claim is: :class:`Claim`, a chapter's claims (:class:`Chapter`), and what checking
them finds (:class:`Report`). See :mod:`attnsink.claims`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..profiles import PROFILES

PROFILES_ALL = tuple(PROFILES)


class ClaimError(AssertionError):
    """A claim the text makes does not hold on the runs where it must."""


@dataclass(frozen=True)
class Claim:
    """One sentence of the text and the check that backs it. ``check(m)`` receives the
    chapter's measures ``m`` (a dict) and returns ``(holds, shown)``: whether the claim holds
    and the measured evidence in a few words ("smallest 0.998 ≥ 0.95")."""

    id: str
    text: str
    check: Callable[[dict], tuple[bool, str]]
    profiles: tuple[str, ...] = ("full",)

    def __post_init__(self):
        if not self.id or not self.id.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"id must be a short name of letters, digits and dashes, got {self.id!r}")
        if not self.text.strip():
            raise ValueError(f"claim {self.id}: text must be the sentence it backs")
        bad = set(self.profiles) - set(PROFILES_ALL)
        if not self.profiles or bad:
            raise ValueError(
                f"claim {self.id}: profiles must be a non-empty subset of {PROFILES_ALL}, got {self.profiles}"
            )

    def run(self, m: dict) -> tuple[bool, str]:
        """The check on measures ``m``, as ``(holds, shown)``; a check that fails to compute
        is an error, not a claim that does not hold."""
        holds, shown = self.check(m)
        return bool(holds), str(shown)


@dataclass
class Chapter:
    """A chapter's claims, and the function that measures what they read from its runs."""

    key: str
    claims: list[Claim] = field(default_factory=list)
    measure: Callable[..., dict] | None = None

    def measures(self, fn: Callable[..., dict]) -> Callable[..., dict]:
        """Register ``fn(*runs, **more) -> dict`` as the chapter's measures: every number its
        text quotes and its claims read, by name."""
        if self.measure is not None:
            raise ValueError(f"{self.key} already has its measures")
        self.measure = fn
        return fn

    def claim(self, id: str, text: str, *, profiles: tuple[str, ...] = ("full",)):
        """Register ``check(m) -> (holds, shown)`` as the claim ``id`` backing ``text``."""

        def register(check: Callable[[dict], tuple[bool, str]]):
            if any(c.id == id for c in self.claims):
                raise ValueError(f"{self.key} already has a claim {id!r}")
            self.claims.append(Claim(id, text, check, tuple(profiles)))
            return check

        return register


@dataclass
class Report:
    """What :func:`check_claims` found: the chapter's measures, and per claim whether it
    holds, the evidence, and whether it had to hold under ``profile``."""

    key: str
    profile: str
    measures: dict
    rows: list[dict]

    @property
    def failed(self) -> list[dict]:
        """The claims that do not hold where they must."""
        return [r for r in self.rows if r["required"] and not r["holds"]]

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows)

    def _repr_html_(self) -> str:
        from html import escape

        held = sum(r["holds"] for r in self.rows)
        head = (
            f"<p><strong>{held} of {len(self.rows)} claims hold</strong> on this run "
            f"(profile {escape(self.profile)}).</p>"
        )
        wrap = 'style="white-space: normal; text-align: left"'  # the book's cells do not wrap by default
        body = "".join(
            "<tr>"
            f"<td>{'✓' if r['holds'] else ('✗' if r['required'] else '–')}</td>"
            f'<td {wrap}><code style="white-space: normal; overflow-wrap: anywhere">{escape(r["id"])}</code>'
            f"<br>{escape(r['claim'])}</td>"
            f"<td {wrap}>{escape(r['measured'])}</td></tr>"
            for r in self.rows
        )
        table = (  # fixed layout: the table wraps its text to the book's column
            '<table class="claims" style="width: 100%; table-layout: fixed; overflow-wrap: anywhere">'
            '<colgroup><col style="width: 2em"><col style="width: 60%"><col></colgroup>'
            "<thead><tr><th></th><th>claim: the text says</th>"
            f"<th>measured</th></tr></thead><tbody>{body}</tbody></table>"
        )
        note = (
            "<p>– : does not hold on the quick profile's small runs, and need not: "
            "the text describes the full runs.</p>"
            if any(not r["holds"] and not r["required"] for r in self.rows)
            else ""
        )
        return head + table + note

    def __repr__(self) -> str:
        lines = [f"{sum(r['holds'] for r in self.rows)} of {len(self.rows)} claims hold (profile {self.profile})"]
        for r in self.rows:
            mark = "ok " if r["holds"] else ("FAIL" if r["required"] else "-- ")
            lines.append(f"  {mark} {r['id']}: {r['measured']}")
        return "\n".join(lines)
