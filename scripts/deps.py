"""Print the pip requirements of pyproject.toml, one per line: runtime, plus extras named in argv.

The plugin is loaded by the rplugin host from its own directory, never installed
as a package, so `make install` installs only these requirements.
"""

import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import pip._vendor.tomli as tomllib  # type: ignore[no-redef]

project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
requirements = list(project["dependencies"])
for extra in sys.argv[1:]:
    requirements += project["optional-dependencies"][extra]
print("\n".join(requirements))
