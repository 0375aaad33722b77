"""What every chapter of the book calls first: ``PROFILE = setup()``.

A chapter opens with two cells: on Colab only, one that clones the book's repository (the
library and the store of trained models it carries) and installs the library; then
:func:`setup`, which picks the profile the chapter runs in, says in one line where its
trained models come from and how to change that, and sets the book's figure style.
"""

from __future__ import annotations

import os

from .prose import number  # noqa: F401  (the book's cells import it from here)


def setup(profile: str | None = None, *, train: bool | None = None) -> str:
    """Resolve the profile (:func:`attnsink.profiles.resolve_profile`), print
    :func:`models_line` for it, set the figure theme, and return the profile.

    ``profile`` and ``train`` override ``$ATTNSINK_PROFILE`` and ``$ATTNSINK_TRAIN`` as in
    :func:`~attnsink.profiles.resolve_profile` and :func:`~attnsink.profiles.resolve_training`.
    """
    from .cache import default_cache_dir, default_store_dir
    from .plots import set_theme
    from .profiles import PROFILE_ENV, resolve_profile, resolve_training

    chosen = profile is not None or bool(os.environ.get(PROFILE_ENV))
    profile = resolve_profile(profile)
    line = models_line(
        profile,
        train=resolve_training(train, profile),
        store=default_store_dir() is not None,
        cache=default_cache_dir() is not None,
        chosen=chosen,
    )
    print(line)
    set_theme()
    return profile


def models_line(profile: str, *, train: bool, store: bool, cache: bool, chosen: bool = True) -> str:
    """One line: the profile, where its trained models come from, and how to change both.

    ``train``: whether models found nowhere are trained here; ``store``: whether the
    repository's store of trained models is there (it holds ``full`` models only, so it is
    named for that profile only); ``cache``: whether the results cache is on; ``chosen``:
    whether the profile was asked for (else it is this machine's default: ``full`` with a
    GPU, ``quick`` without).

    For example, in the quick profile on a machine without a GPU: "profile quick (no GPU):
    models from the cache, else trained here (ATTNSINK_TRAIN=0: never;
    ATTNSINK_PROFILE=quick|full switches)", on one line.
    """
    sources = [name for name, on in (("the store", store and profile == "full"), ("the cache", cache)) if on]
    where = "models from " + ", then ".join(sources) if sources else "no store and no cache"
    if train:
        fate, how = ", else trained here", "ATTNSINK_TRAIN=0: never"
    else:
        fate, how = "; missing ones are not trained", "ATTNSINK_TRAIN=1 trains them"
    default = "" if chosen else f" ({'GPU' if profile == 'full' else 'no GPU'})"
    return f"profile {profile}{default}: {where}{fate} ({how}; ATTNSINK_PROFILE=quick|full switches)"


def table(df, caption: str, *, precision: int = 3, index: bool = True, formats: dict | None = None):
    """``df`` as the book shows a table: a pandas Styler with ``caption`` above it, and the
    index shown only when ``index``. Numbers are written by :func:`number` with
    ``precision`` (a float column whose values are all whole numbers as integers); strings,
    such as :func:`attnsink.analysis.mean_range`'s, as they are; ``formats`` maps a column
    to a format string (``"{:.0%}"``) or a function of the value, for the columns that need
    another form. The look (padding, right-aligned tabular digits) is the book's
    stylesheet's (``_static/tables.css``)."""
    import numbers

    import numpy as np

    if not caption:
        raise ValueError("caption must say what the table shows")
    formats = dict(formats or {})
    unknown = set(formats) - set(df.columns)
    if unknown:
        raise ValueError(f"formats names columns the table does not have: {sorted(map(str, unknown))}")

    def whole(column) -> bool:
        values = np.asarray([v for v in df[column] if isinstance(v, numbers.Real) and not isinstance(v, bool)], float)
        values = values[np.isfinite(values)]
        return values.size > 0 and bool(np.all(values == np.round(values))) and bool(np.all(np.abs(values) < 1e15))

    def cell(column):
        integer = whole(column)

        def show(v):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                return "\u2013" if v is None else str(v)
            if integer and np.isfinite(v):
                return f"{int(round(float(v))):,}" if abs(v) >= 1e4 else str(int(round(float(v))))
            return number(v, precision)

        return show

    for column in df.columns:
        formats.setdefault(column, cell(column))
    styler = df.style.format(formats).set_caption(caption)
    return styler if index else styler.hide(axis="index")
