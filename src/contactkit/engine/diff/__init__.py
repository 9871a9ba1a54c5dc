"""Differentiable contact dynamics: the F/T reading as a torch function of state, action and geometry θ.

Differentiable-contact paper (Li et al.) §IV: contact features of convex pieces whose vertices are affine in θ
(:mod:`.features`, feature pairs chosen by :mod:`.query`), the box-friction LCP differentiated at its active set
(:mod:`.lcp_grad`), the impedance-controlled step with time of impact (:mod:`.step`), and central finite-difference
checks of every gradient (:mod:`.gradcheck`).
"""
