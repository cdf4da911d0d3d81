"""mkdocs hook: the schema language's reference (schemas/README.md, kept beside the schemas it describes) and the
changelog (CHANGELOG.md) are pages of the site too, as schema-language.md and changelog.md."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"schema-language.md": ROOT / "schemas" / "README.md", "changelog.md": ROOT / "CHANGELOG.md"}


def on_files(files, config):
    for name, source in PAGES.items():
        files.append(File.generated(config, name, content=source.read_text()))
    return files
