"""Alt text for images the book pastes from another page (the landing page's figure is glued
from chapter 1, and myst-nb's cross-page paste carries no alt text): ``image_alt`` in the
Sphinx config maps a document name to the alt text of its images that have none."""


def _set_alt(app, doctree, docname):
    from docutils import nodes

    alt = app.config.image_alt.get(docname)
    if alt:
        for image in doctree.findall(nodes.image):
            if not image.get("alt"):
                image["alt"] = alt


def setup(app):
    app.add_config_value("image_alt", {}, "env")
    app.connect("doctree-resolved", _set_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
