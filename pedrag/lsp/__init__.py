"""pedrag's language server: diagnostics, navigation and quick fixes for theory files in an
editor. `pedrag lsp` (`pedrag.commands.lsp`) starts `pedrag.lsp.server.create_server()`."""
