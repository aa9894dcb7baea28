"""The one source of the program's version.

A release sets `__version__` to the version of CHANGELOG.md's newest release heading (and the
metainfo's newest <release>). Between releases the version is the next one's `.dev0`, so a
build of unreleased work never claims to be the last release: `boris --version`, a store's
`written_by` and an exported package's `boris_version` tell them apart. `RELEASED` is the
newest release this build comes after (tests/test_version.py holds all of it to CHANGELOG.md).
"""

__version__ = "0.2.0.dev0"
RELEASED = "0.1.0"

#: The store schemas this program reads, oldest first (the scripts in store/migrations); it
#: writes the last. Here, beside the version, so that reading it imports nothing (the
#: window's first look at a store, store.reads.peek, runs before SQLAlchemy is loaded).
SCHEMA_REVISIONS: tuple[str, ...] = (
    "0001",
    "0002",
    "0003",
    "0004",
    "0005",
    "0006",
    "0007",
    "0008",
    "0009",
    "0010",
    "0011",
    "0012",
    "0013",
    "0014",
    "0015",
    "0016",
    "0017",
    "0018",
    "0019",
    "0020",
    "0021",
)
