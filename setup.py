"""The one thing pyproject.toml cannot say: the top-level ``resources/`` is the package ``reviewer_app.resources``.

``packages.find`` only finds directories under ``reviewer_app/``; the design card keeps the app's data files
(icons, desktop entry, AppStream metainfo) at the top level, so they are added here, mapped by ``package-dir``
in pyproject.toml. Everything else is configured in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["reviewer_app", "reviewer_app.*"]), "reviewer_app.resources"])
