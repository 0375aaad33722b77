"""What every chapter of the book calls first: ``PROFILE = setup()``.

A chapter opens with two cells: on Colab only, one that clones the book's repository (the
library and the store of trained models it carries) and installs the library; then
:func:`setup`, which picks the profile the chapter runs in, says in one line where its
trained models come from and how to change that, and sets the book's figure style.
"""

from __future__ import annotations

import os


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


def table(df, caption: str, *, precision: int = 3, index: bool = True):
    """``df`` as the book shows a table: a pandas Styler with ``caption`` above it, floats to
    ``precision`` decimals (strings, such as :func:`attnsink.analysis.mean_range`'s, as they
    are), and the index shown only when ``index``. The look (padding, right-aligned tabular
    digits) is the book's stylesheet's (``_static/tables.css``)."""
    if not caption:
        raise ValueError("caption must say what the table shows")
    styler = df.style.format(precision=precision).set_caption(caption)
    return styler if index else styler.hide(axis="index")
