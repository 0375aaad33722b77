"""The API page's experiments, read from the registry: the directive ``experiments-api``
writes one ``automodule`` per experiment of :data:`attnsink.registry.REGISTRY`, in its order,
so that a new experiment is documented without editing the page."""

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList


class ExperimentsApi(Directive):
    has_content = False

    def run(self):
        from attnsink.registry import REGISTRY

        lines = []
        for e in REGISTRY:
            lines += [f".. automodule:: {e.module}", "   :members:", ""]
        holder = nodes.container()
        self.state.nested_parse(StringList(lines, source="experiments-api"), self.content_offset, holder)
        return holder.children


def setup(app):
    app.add_directive("experiments-api", ExperimentsApi)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
