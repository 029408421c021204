// Placeholder translation unit until the tokenizer lands.
