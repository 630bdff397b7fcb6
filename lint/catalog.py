"""The list of the rule catalog: one module per rule in `lint/rules/`, in catalog order, each
named after the code it defines (`dyn101_print` defines DYN101). Kept apart from the rules, so
that what only checks codes (the configuration, `--select`) imports no rule module, nor libcst
with them; `lint.rules.all_rules()` loads the rules themselves."""

from __future__ import annotations

# One module per rule, in catalog order.
RULE_MODULES = (
    "dyn001_syntax_error",
    "dyn002_unreadable_file",
    "dyn101_print",
    "dyn102_debugger",
    "dyn103_logging",
    "dyn104_warnings",
    "dyn105_untraceable_call",
    "dyn106_numpy_scalar_math",
    "dyn107_none_under_compile",
    "dyn108_deepcopy",
    "dyn109_unsupported_context_manager",
    "dyn110_item",
    "dyn111_tolist",
    "dyn112_str_of_tensor",
    "dyn113_min_max_of_tuples",
    "dyn114_runtime_type_checker",
    "dyn115_check_message_not_callable",
    "dyn116_optional_import",
    "dyn117_assert_module",
    "dyn118_iterator_to_math_reduction",
    "dyn119_cached_property",
    "dyn120_tensor_control_flow",
    "dyn121_data_dependent_loop",
    "dyn130_dynamic_shape_op",
    "dyn131_tensor_as_int",
    "dyn132_numpy_array_attribute",
    "dyn140_requires_grad_in_region",
    "dyn141_autograd_function_duplicate_input",
    "dyn142_buffer_reassigned",
    "dyn143_autograd_in_region",
    "dyn144_saved_variables",
    "dyn145_autograd_function_classmethod",
    "dyn146_inplace_detach_of_input",
    "dyn201_shape_branch",
    "dyn202_size_loop",
    "dyn203_self_mutation",
    "dyn301_host_sync",
)

# The codes, in catalog order: a rule's code is its module's prefix (a test checks it).
RULE_CODES = tuple(name.partition("_")[0].upper() for name in RULE_MODULES)

# Rules whose default severity is not "error" (the rules declare it too; a test checks both
# agree): what needs a severity without loading the rules (the summary line) reads it here.
SEVERITIES = {"DYN116": "warning", "DYN201": "warning", "DYN202": "warning", "DYN203": "warning", "DYN301": "info"}
