; Function definitions, sync and async; a definition directly inside a class body is a method.
; Lambdas are expressions, not definitions, so they never match.
(function_definition
  name: (identifier) @function.name) @function.def
