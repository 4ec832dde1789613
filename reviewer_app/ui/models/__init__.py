"""Qt item models shared by several views: the flat table, the short list, the tree base, the request list."""
