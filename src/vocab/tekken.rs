//! Loading Mistral `tekken.json` files.
