"""migrate"""
