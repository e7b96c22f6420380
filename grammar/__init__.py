"""The Lark grammar of the .pinn language (installed as ``pinnspec.grammar``)."""
