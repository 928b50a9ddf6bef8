"""The graph: typed links between notes, kept in the source note's frontmatter."""
