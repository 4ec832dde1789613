"""Starting the window process: the QApplication and qasync loop, platform checks, GC on the GUI thread, --demo."""
