// Placeholder translation unit until the corpus builder lands.
