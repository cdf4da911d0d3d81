"""kfmt's build-time code generator: YAML schema -> validated spec -> IR -> Jinja2 -> generated/."""
