"""What every chapter of the book calls first: ``PROFILE = setup(chapter=N)``, and
:func:`glue`, which puts a computed number into the chapter's text.

A chapter opens with two cells: on Colab only, one that clones the book's repository (the
library and the store of trained models it carries) and installs the library; then
:func:`setup`, which picks the profile the chapter runs in, says in one line where its
trained models come from and how to change that, and sets the book's figure style.

A chapter needs only the library's base install (as on Colab): the book's build tools
(``myst_nb``) are used when they are there, and :func:`glue` does without them.
"""

from __future__ import annotations

import os

from .prose import number  # noqa: F401  (the book's cells import it from here)


def setup(*, chapter: int | None = None, profile: str | None = None, train: bool | None = None) -> str:
    """Pick chapter ``chapter``'s profile, print :func:`models_line` for it (and, under
    ``quick``, :data:`QUICK_BANNER`), set the figure theme, and return the profile.

    ``profile`` (else ``$ATTNSINK_PROFILE``) wins. Without either, the profile is ``full``
    when the repository's store holds every ``full`` model the chapter reads
    (:func:`attnsink.experiments.chapter_experiments`: the published figures, read in
    seconds, nothing trained), and otherwise this machine's
    default (:func:`attnsink.profiles.resolve_profile`: ``full`` with CUDA, ``quick``
    without). ``train`` overrides ``$ATTNSINK_TRAIN`` as in
    :func:`~attnsink.profiles.resolve_training`.
    """
    from .cache import default_cache_dir, default_store_dir
    from .plots import set_theme
    from .profiles import PROFILE_ENV, resolve_profile, resolve_training

    chosen = profile is not None or bool(os.environ.get(PROFILE_ENV))
    stored = False
    if not chosen and chapter is not None:
        from .experiments import chapter_experiments

        stored = store_holds(chapter_experiments(chapter))
    profile = "full" if stored else resolve_profile(profile)
    line = models_line(
        profile,
        train=resolve_training(train, profile),
        store=default_store_dir() is not None,
        cache=default_cache_dir() is not None,
        chosen=chosen or stored,
    )
    print(line)
    if profile == "quick":
        print(QUICK_BANNER)
    set_theme()
    return profile


QUICK_BANNER = (
    "Note: the text describes the published runs (the full profile). The figures and numbers "
    "below come from the quick profile's smaller runs, and the text's numbers are this run's."
)
"""What :func:`setup` prints under the quick profile, below its first line."""


def store_holds(experiments) -> bool:
    """Whether the repository's store holds every ``full`` model of ``experiments`` (names of
    :data:`attnsink.experiments.EXPERIMENTS`; False for none, or without a store)."""
    from .cache import default_store_dir
    from .stored import status

    store_dir = default_store_dir()
    if not experiments or store_dir is None:
        return False
    table = status("full", store_dir=store_dir, names=list(experiments))
    return bool((table["missing"] == 0).all())


def glue(name: str, value, display: bool = True):
    """Put ``value`` into the chapter's text under ``name`` (``{glue:}`name``` in its markdown),
    through ``myst_nb.glue`` when the book's build tools are installed. Without them (a chapter
    run in Colab, or anywhere with the library's base install) the value is shown where the
    call is, when ``display``, and otherwise nothing happens: the text refers to it only in the
    built book."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            try:
                from IPython.display import display as show
            except ImportError:
                print(value)
            else:
                show(value)
        return None
    return myst_glue(name, value, display=display)


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
