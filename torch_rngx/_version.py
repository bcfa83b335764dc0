"""The one place the package's version is set: pyproject.toml's metadata reads it ([tool.setuptools.dynamic]),
torch_rngx.__version__ is it, and CHANGELOG.md has a section for it. STREAM is the version of the stream the
package draws (docs: stream/): stream 1.0 never changes, so a release that keeps it keeps every value."""

__version__ = "0.3.0"
STREAM = "1.0"
