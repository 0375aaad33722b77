"""Drop repeated <script> entries from each page.

Jupyter Book 1.x registers sphinx-thebe's inline configuration script twice, which
declares ``const THEBE_JS_URL`` twice and throws a SyntaxError in every browser. The
book's browser test fails on any JavaScript error, so remove exact duplicates here.
"""


def _dedupe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        # the same file or inline body registered twice (inline ones as None or ''), whatever the priority
        attributes = tuple(sorted((k, str(v)) for k, v in getattr(js, "attributes", {}).items()))
        key = (str(getattr(js, "filename", js) or ""), attributes)
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
