"""The preview of a request: why it was asked, what its command does, what it will touch (issue 26).

Above the runtime layer (it reads workspace files through ``domain.safe_fs``), below the UI; never imports Qt.
"""
