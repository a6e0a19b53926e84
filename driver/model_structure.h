// A model's structure as `graphc refit` compares it: the model as imported,
// with its input shapes bound and every shape inferred, before any pass,
// described without its weights' values. Every input and output (dtype,
// shape), every constant a node reads (dtype, shape, and its value when it is
// structural), every node (operator, inputs, outputs, attributes, output
// types, sub-graphs), in graph order, each as hashes of its parts so that a
// mismatch names the item and the part.
//
// A constant is structural when changing it changes more than the weights:
// a value shape inference reads (a Reshape's shape, axes, a Resize's scales,
// an If's condition, TopK's k, and what those are computed from) or a
// one-element constant, which the kernels take as a literal in their code.
// Values the optimizer reads for other decisions (an attention mask recognised
// as causal, weights beyond float16's range kept in float32, equal small
// constants merged) are not here: a refit they change gives a different
// plan, which the refit's plan comparison refuses (driver/refit.h).
#pragma once

#include "engine_format/engine_file.h"
#include "ir/graph.h"

namespace graphc::driver {

// Fills `out.structure` and `out.structure_hash` from `inferred` (as
// load_model returns it, or a range build's graph at its opt shapes).
Status describe_structure(const ir::Graph& inferred, engine::Refit& out);

// OK when `model` (describe_structure of `inferred`) has the structure the
// engine records; else kInvalidModel naming the first item and part that
// differ, with this model's side of it, and how many items differ.
Status compare_structure(const engine::Refit& engine, const engine::Refit& model,
                         const ir::Graph& inferred);

}  // namespace graphc::driver
