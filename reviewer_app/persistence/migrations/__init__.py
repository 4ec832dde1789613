"""Alembic migrations, shipped inside the package so a frozen app can apply them."""
