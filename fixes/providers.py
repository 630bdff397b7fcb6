"""The fixes rules offer, registered by the names rules ask for (`lint.rule.offer_fix`), and the
clean-ups `fixes/apply.py` runs after them.

Importing this module fills the lint layer's fix-provider table; the app (`dynalint.run.engine`)
does so before it lints, so that the lint layer never imports the fix generators.
"""

from __future__ import annotations

from dynalint.lint.rule import register_fix_provider

from .apply import AFTER_FIXES
from .autograd import duplicate_input_fix, function_staticmethod_fix, saved_tensors_fix, variable_detach_fix
from .buffers import buffer_local_fix
from .checks import assert_message_fix, assert_module_fix, assert_split_fix, raise_check_fix
from .compile_default import compile_default_fix
from .cond import cond_fix
from .debugger import debugger_fix, remove_unused_debugger_imports
from .disable_helper import disable_helper_fix
from .dispatch import dispatch_fix
from .experts import expert_loop_fix
from .full_fill import new_full_fix
from .guard import guard_fix
from .index import one_element_index_fix
from .layer_drop import layer_drop_fix
from .list_comprehension import list_of_generator_fix, list_of_iterator_call_fix
from .check_message import check_message_fix
from .generator import generator_fix
from .masking import mask_fix, mask_update_fix
from .module_to import module_to_fix
from .numpy_math import numpy_math_fix
from .sdpa import sdpa_kernel_fix
from .requires_grad import requires_grad_fix
from .scalar import item_fix
from .scalar_math import python_math_fix
from .select_chain import chain_select_fix
from .mask_guard import mask_guard_fix
from .uniform_draw import uniform_draw_fix
from .where import where_fix

PROVIDERS = {
    "guard": guard_fix,  # DYN101, DYN103, DYN104
    "debugger": debugger_fix,  # DYN102
    "compile_default": compile_default_fix,  # DYN107
    "numpy_math": numpy_math_fix,  # DYN106
    "list_of_generator": list_of_generator_fix,  # DYN113, DYN118
    "list_of_iterator_call": list_of_iterator_call_fix,  # DYN118
    "one_element_index": one_element_index_fix,  # DYN131
    "item": item_fix,  # DYN110
    "python_math": python_math_fix,  # DYN110
    "new_full": new_full_fix,  # DYN110
    "uniform_draw": uniform_draw_fix,  # DYN120 (safe)
    "layer_drop": layer_drop_fix,  # DYN120
    "mask_guard": mask_guard_fix,  # DYN120
    "where": where_fix,  # DYN120
    "raise_check": raise_check_fix,  # DYN120
    "cond": cond_fix,  # DYN120
    "assert_split": assert_split_fix,  # DYN120
    "assert_message": assert_message_fix,  # DYN120
    "assert_module": assert_module_fix,  # DYN117
    "sdpa_kernel": sdpa_kernel_fix,  # DYN109
    "select_chain": chain_select_fix,  # DYN120
    "mask": mask_fix,  # DYN130
    "experts": expert_loop_fix,  # DYN130
    "dispatch": dispatch_fix,  # DYN130, DYN120
    "mask_update": mask_update_fix,  # DYN130
    "requires_grad": requires_grad_fix,  # DYN140
    "duplicate_input": duplicate_input_fix,  # DYN141
    "check_message": check_message_fix,  # DYN115
    "generator": generator_fix,  # DYN105
    "variable_detach": variable_detach_fix,  # DYN105
    "function_staticmethod": function_staticmethod_fix,  # DYN145
    "saved_tensors": saved_tensors_fix,  # DYN144
    "buffer_local": buffer_local_fix,  # DYN142
    "module_to": module_to_fix,  # DYN203
    "disable_helper": disable_helper_fix,  # DYN105, DYN110, DYN120, DYN121, DYN130 in host-side helpers
}

for _name, _provider in PROVIDERS.items():
    register_fix_provider(_name, _provider)

# Several debugger calls removed in one run leave their imports unused: drop them at the end.
AFTER_FIXES["DYN102"] = remove_unused_debugger_imports
