"""The dialogs that collect a decision's text or edited arguments, the reasons remembered, the text viewer."""
