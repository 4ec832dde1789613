from typing import Any


def edit_diff(original: Any, edited: Any) -> str:
    return ""
