"""Small pieces every room of the window shares: texts, the theme, clipboard, task keepers, layouts."""
