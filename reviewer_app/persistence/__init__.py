"""SQLModel tables, engine set-up, Alembic migrations and the store. No Qt."""
