"""Built-in tools: fs.read, fs.write, fs.list, shell.exec, search.grep."""
