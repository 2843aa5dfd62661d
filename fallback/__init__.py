"""fallback"""
