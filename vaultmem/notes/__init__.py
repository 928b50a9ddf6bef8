"""Notes: the memory model, its frontmatter (round-trip safe), slugs and ids."""
