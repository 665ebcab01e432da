; The whole module is a node of its own.
(module) @file.def
