"""LLM access behind one protocol: local llama.cpp, any OpenAI-compatible endpoint, a scripted fake."""
