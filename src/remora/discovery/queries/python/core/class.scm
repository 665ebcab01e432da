; Class definitions; decorators are added by the parser from the enclosing decorated_definition.
(class_definition
  name: (identifier) @class.name) @class.def
