import pytest

from agent.router import route_by_rules

pytestmark = pytest.mark.django_db  # store names come from the store list

TABLE = [
    # policy
    ("客人说酒有异味怎么办", "policy"), ("会员卡能跨店用吗", "policy"), ("满减和折扣券能一起用吗", "policy"),
    ("什么情况必须叫店长", "policy"), ("客人喝多了还要酒怎么处理", "policy"), ("存酒能放多久", "policy"),
    ("反结账要谁批", "policy"), ("发票怎么开", "policy"), ("扎啤机管路多久清洗一次", "policy"),
    ("新员工第一周要掌握哪些规定", "policy"), ("团购券可以退吗", "policy"), ("客人吃坏肚子了咋办", "policy"),
    ("黑牌是什么酒", "policy"), ("未成年人能进包厢吗", "policy"), ("充2000送多少", "policy"),
    # 免单 counts no orders; printing a balance is a question of whether staff may (both were data)
    ("店长最多能免多少单", "policy"), ("客人让我把卡里余额打出来给他看", "policy"),
    ("外卖能不能卖鸡尾酒", "policy"), ("失物招领的流程", "policy"), ("店里着火了怎么办", "policy"),
    # data
    ("上周天河店卖了多少", "data"), ("上周广州天河店卖了多少", "data"), ("昨天福田店营业额多少", "data"),
    ("深圳福田店热销排行前五", "data"), ("本月各门店营业额对比", "data"), ("天河店库存哪些低于安全库存", "data"),
    ("最近7天哪个时段最忙", "data"), ("上个月祖庙店客单价", "data"), ("本周销量前10的商品", "data"),
    ("会员13812345678余额还有多少", "data"), ("会员M00001在天河店能用多少", "data"), ("珠江新城店上周多少单", "data"), ("这个月卖得最好的啤酒", "data"),
    # both
    ("我储值送的100能不能在另一家店花，会员M00003余额还有多少", "both"),
    ("天河店青岛啤酒快没了，补货的规定是什么", "both"),
    ("上周天河店卖了多少，满减券的规则是什么", "both"),
    # action
    ("天河店的青岛啤酒快没了，帮我补 20 箱", "action"), ("帮我补10箱百威", "action"),
    ("客人投诉酒有异味，帮我建个工单", "action"), ("麻烦开一张客诉工单", "action"), ("请帮我申请补货", "action"),
    ("青岛快没了，帮我补点货", "action"), ("帮我补点青岛", "action"),  # no quantity yet: the action asks for it
    ("帮天河店补两箱青岛", "action"), ("给福田店补两箱青岛啤酒", "action"), ("帮我补一百箱青岛", "action"),  # a store named; 百
    ("给福田补两箱科罗娜", "action"),  # was a policy answer about 沽清: a store said without 店
    ("给客人补两瓶", "policy"), ("帮他补两杯", "policy"),  # a guest's drinks, not the store's stock
    ("科罗娜还有吗", "data"), ("🍺 科罗娜还有吗？", "data"),  # were the 沽清 rule; 「还剩多少」 was already stock
    # Nothing but a product's name asks which figure (it was refused as a gap in the SOPs); a
    # product in a rule question is still a rule question.
    ("百威", "data"), ("那百威呢", "data"), ("科罗娜怎么样？", "data"), ("黑牌是什么酒", "policy"),
    # out of scope
    ("今天天气怎么样", "out_of_scope"), ("给我讲个笑话", "out_of_scope"), ("帮我写一首诗", "out_of_scope"),
    # A generic question frame (要不要, 怎么) does not make an off-topic question a rule question;
    # a guest next to the off-topic word does; a poem about beer is still a poem.
    ("明天广州会不会下雨，要不要带伞", "out_of_scope"), ("孩子六年级作文《我的妈妈》怎么开头", "out_of_scope"),
    ("写一首关于秋天的七言绝句", "out_of_scope"), ("帮我写一首关于啤酒的诗", "out_of_scope"),
    ("客人在减肥，问一杯莫吉托大概多少卡路里", "policy"),
    # Data words that only tell what happened ask for no figure (no 多少/几/哪/吗 in their clause).
    ("晚上九点多单子爆了，外卖十五分钟肯定做不出来，咋弄", "policy"), ("外卖单子太多做不过来要超时了", "policy"),
    ("科罗娜卖光了 跟客人推啥替代", "policy"), ("推荐一部好看的电影", "out_of_scope"),
    ("科罗娜卖光了，客人还点咋办，推荐啥给他", "policy"),
    ("外卖超时了多少单", "data"), ("哪家店单子最多", "data"),  # 单子太多 describes; 多少单 / 单子最多 ask
    ("同一个时间段有两桌人都说吃完上吐下泻，症状一模一样，这算大事吧？店长要多久报上去", "policy"),
    # 「两个店长」 are people, not two stores; 「比较严重」 compares nothing.
    ("我们店威士忌快断货了，想从同城另一家店拉一整箱过来，两个店长说好就行吗", "policy"),
    ("比较严重的那种投诉处理完还要再打电话问客人吗？打了两回都没人接咋整", "policy"),
    ("天河店和福田店比较一下上周营业额", "data"), ("各店上周营业额比较", "data"),
    # A figure the asker wants to print or show is not one they ask for.
    ("客人让我把他卡里还剩多少钱打出来给他看看，可以吗", "policy"),
    ("今晚营业额破纪录了，我想把后台的流水截图发个朋友圈庆祝一下", "policy"),  # publishing a figure
    # 「单子」 is also a work order or a handover sheet; an order count only with a quantity.
    ("上一班跟我说8号桌客人对花生过敏，这事要写进换班的单子里吗", "policy"),
    ("昨天那单客诉已经建好单子了，最晚啥时候要给客人一个说法", "policy"),
    ("本周哪家店单子最多", "data"), ("祖庙上周几点单子最多", "data"),
    # Spoken permission frames: 行不 / 可以不 / 接不接 / 就行了吧.
    ("外卖点的鸡翅没货了，我直接换成薯条给他发出去行不", "policy"), ("今晚台风要登陆，外卖单子还接不接", "policy"),
    ("交班的时候点钱少了15块，我在单子上写一笔就行了吧", "policy"),
    ("客人想要张能证明储值余额的东西，我拿手机拍一下POS屏幕发他微信可以不", "policy"),
    # Someone else wants the figure: whether to give it is the question.
    ("一个女的说是客人姐姐，到前台想查她弟弟卡里还有多少钱", "policy"),
    # A member's balance asked over the phone: whether to tell it (and the spending) is the rule; it was
    # read as stock left (「还剩多少」) and offered a restock.
    ("客人打电话问卡里还剩多少 还要每笔花了啥", "policy"), ("客人打电话问卡上还剩多少", "policy"),
    ("客人打电话问会员卡还剩多少", "policy"), ("客人打电话问卡里面还剩多少", "policy"), ("青岛还剩多少", "data"),
    ("登记了客人的投诉 多久内要给人家答复", "policy"),  # done already: 登记了 asks what comes next (was a ticket request)
    ("会员13812345678卡里还有多少钱", "data"),
    # A price is on the drinks list; what was sold is in the figures.
    ("扎啤一杯现在卖多少钱", "policy"), ("炸鸡翅一份现在卖多少钱", "policy"), ("外卖单子的打包费一份收多少", "policy"),
    ("天河店上周卖了多少钱", "data"), ("这个月哪家店客单价最高", "data"),
    # 「找哪家做」 asks for a vendor, not which of our stores (was asked 「请问要查哪段时间？」).
    ("客人让我们帮订个六寸生日蛋糕，大概多少钱，找哪家做", "policy"), ("空调坏了找哪家来修", "policy"),
    ("上个月哪家做得最好", "data"), ("哪家订单最多", "data"), ("上周哪间订单最多", "data"),
    # Pay rules are about the job (a gap in the rules if unanswered); someone's salary is declined.
    ("我还在试用期，试用期一般多久能转正，工资会涨多少", "policy"),
    ("小王工资扣了多少", "out_of_scope"), ("店长工资涨到多少了", "out_of_scope"),
    # Asking for figures stays a data request: sending them to me, a boss who wants them,
    # a price over a period, 其他店 / 一个月 are not someone else wanting a member's card.
    ("上周营业额发给我", "data"), ("把昨天的营业额截图发给我", "data"), ("上周营业额发到群里", "data"),
    ("他要看上周的销量", "data"), ("他想知道上周哪家店卖得最好", "data"), ("其他店上周营业额我要看看", "data"),
    ("上一个月营业额我想看看", "data"), ("上周哪款酒价格最高卖得最好", "data"), ("上周每杯平均卖多少钱", "data"),
    ("今天单子怎么样", "data"), ("昨天单子情况", "data"),
    # From a new user's trial: 整瓶 is a unit, 能…补不 asks permission, 哪些 asks for the data,
    # a member number next to 储值 asks for the balance.
    ("黑牌整瓶卖多少钱，单杯呢", "policy"), ("客人卡里余额不够，差的能用微信补不", "policy"),
    ("全公司现在哪些店哪些货库存不够", "data"), ("我把客人的储值余额页面截个图发店群里让店长看行不", "policy"), ("帮我查下M00002这个会员的储值，客人在吧台等着", "data"),
    # The whole message is a restock order (was read as a rule question: 「制度里没有关于「可口可乐」的规定」) …
    ("补货：可口可乐 24 瓶", "action"), ("补货科罗娜48瓶", "action"), ("青岛补两箱", "action"), ("补两箱青岛", "action"),
    ("福田店青岛啤酒要补货，补20箱", "action"), ("青岛没了，补两箱", "action"),  # was low_stock: a proposal for other products
    ("青岛啤酒补5箱，帮我提一下", "action"), ("下单两箱可乐", "action"), ("补科罗娜", "action"), ("补货 红牌", "action"),
    ("补签", "policy"), ("补打小票", "policy"), ("补充说明一下", "policy"), ("补货流程", "policy"),
    # … and what a review found they over-matched: questions about products, topics, past events, other things
    ("科罗娜一箱有多少瓶", "policy"), ("一瓶黑牌有几杯", "policy"), ("补货审批", "policy"), ("补货上限", "policy"),
    ("已经补货20箱", "policy"), ("昨天进货20箱", "policy"), ("客人预订10份", "policy"), ("补一瓶黑牌给客人", "policy"),
    ("今天跟昨天比天气怎么样", "out_of_scope"), ("上周和这周的排班怎么样", "policy"), ("科罗娜还有多少", "data"),
    # A third trial: refunds' figures, 收入 of a store, rule questions with 几点/单子/多少钱 in them
    ("上周退款多少", "data"), ("祖庙店上周退款多少钱", "data"), ("退款多少钱以内值班主管能批", "policy"),
    ("十一月外卖收入多少", "data"), ("员工收入多少", "out_of_scope"), ("今晚几点最后点单", "policy"),
    ("外卖单子多久要出餐", "policy"), ("长岛冰茶卖多少钱", "policy"), ("登记一个客诉，客人说长岛冰茶太淡了", "action"),
    ("客诉怎么登记", "policy"), ("客人说酒有怪味 帮我登记个投诉 3号桌", "action"), ("投诉电话是多少", "policy"),
    # … a question about one is not.
    ("补货48瓶够不够", "policy"), ("科罗娜补24瓶吗", "policy"), ("补货的时候写6瓶", "policy"),
]


@pytest.mark.parametrize("question", ["为什么天河店补了三箱青岛", "为啥天河店上周进了十箱啤酒", "帮天河店补了三箱青岛之后还缺吗",
                                      "上周补了20箱"])
def test_asking_about_a_restock_that_happened_is_not_a_request_for_one(question):
    from agent.router import ACTION

    assert route_by_rules(question).intent != ACTION, question


@pytest.mark.parametrize("question,intent", TABLE)
def test_router_table(question, intent):
    decision = route_by_rules(question)
    assert decision.intent == intent, f"{question}: {decision.reason}"
    assert decision.reason


def test_rank_words_are_counted_by_occurrence():
    # 热销、排行、前五 all match one pattern; counted once it would fall under the threshold.
    decision = route_by_rules("深圳福田店热销排行前五")
    assert decision.intent == "data"
    assert "排行×3" in decision.reason


def test_undecided_questions_are_marked_for_the_llm():
    decision = route_by_rules("这个呢")
    assert not decision.decided and decision.intent == "policy"


@pytest.mark.parametrize("question,reason_has", [
    ("福田店有哪些东西快断货了", "库存告急×1"),
    ("天河店上周卖得前两名的商品", "商品排行×1"),
    ("这个月到目前为止四家店哪家卖得最好", "哪家店×1"),
    ("低于安全库存要怎么处理", "怎么办×1"),
])
def test_reason_names_the_table_entries(question, reason_has):
    assert reason_has in route_by_rules(question).reason


def test_router_and_data_guard_read_one_table():
    # The words that made the router say "data" are the ones the planner weighs for the tool.
    from agent import data_guard, router, vocabulary

    assert router.vocab is vocabulary and data_guard.vocab is vocabulary
    tool, reason = data_guard.choose_tool("天河店上周卖得前两名的商品")
    assert tool == "top_products" and "商品排行×1" in reason


@pytest.mark.parametrize("question,decline", [
    ("帮我写一首关于啤酒的诗", "与门店运营无关"),
    ("天河店店长的工资是多少", "薪资"),
    ("员工小王的手机号是多少", "个人信息"),
    ("帮我做一下数学作业", "与门店运营无关"),
])
def test_out_of_scope_is_declined_in_one_line(question, decline):
    from agent.pipeline import answer_question
    from ops.tests.factories import make_user

    decision = route_by_rules(question)
    assert decision.intent == "out_of_scope" and decline in decision.decline
    result, _ = answer_question(question, user=make_user("oos_staff", role="staff"))
    assert result.refused and result.answer == decision.decline and "\n" not in result.answer
    assert not result.citations


@pytest.mark.parametrize("question, intent", [
    ("明天广州会不会下雨", "out_of_scope"),  # a weather forecast (tuning set tf01)
    ("帮我算一下 3x+5=20，x 等于几", "out_of_scope"),  # homework (tuning set tf02)
    ("下雨天门口地滑要放什么", "policy"),  # rain as the store's own safety topic stays a rule question
])
def test_far_questions_of_the_tuning_set_are_declined_and_store_topics_are_not(question, intent):
    assert route_by_rules(question).intent == intent


def test_a_rise_or_fall_of_something_not_the_stores_is_out_of_scope():
    # 「今天上证指数涨了还是跌了」 ran the store's sales (a data question with no figure named).
    assert route_by_rules("今天上证指数涨了还是跌了").intent == "out_of_scope"
    assert route_by_rules("天河店上周营业额涨了还是跌了").intent == "data"
    assert route_by_rules("上周生意涨了还是跌了").intent == "data"


@pytest.mark.parametrize("question, intent", [
    # The asker's own home and family (an off-topic probe written for this, not an evaluation set):
    # food and appliances are the store's words too, and these were answered 「仅供参考」 from
    # the nearest SOP (the range hood from the equipment-cleaning rule).
    ("家里油烟机油太多了怎么清洗", "out_of_scope"),
    ("家用面包机做吐司 求个配方", "out_of_scope"),
    ("我爸有糖尿病 能吃什么水果", "out_of_scope"),
    ("驾照科目二倒车入库有什么技巧", "out_of_scope"),
    # A word of the job makes it the store's question again.
    ("储值卡能转给家里人用吗", "policy"),
    ("家里有事要请假找谁", "policy"),
    ("我妈生日来店里吃饭能打折吗", "policy"),
    ("家里有事能调休吗", "policy"),
])
def test_a_question_about_ones_own_home_or_family_is_declined_unless_it_names_the_job(question, intent):
    decision = route_by_rules(question)
    assert decision.intent == intent
    if intent == "out_of_scope":
        assert "个人生活" in decision.decline


def test_asking_whether_the_assistant_is_a_bot_gets_what_it_is():
    # 「你是chatgpt吗」 was answered from the member-levels section 「仅供参考」.
    for question in ("你是chatgpt吗", "你是机器人吗"):
        decision = route_by_rules(question)
        assert decision.handler == "small_talk" and decision.target == {"kind": "about"}


@pytest.mark.parametrize("question", [
    # 我家 / 我们家 name the chain; 家 inside another word is no home (a review of the first version
    # found each of these declined as 个人生活).
    "我们家过敏原一共标了几类", "我家招牌鸡尾酒是哪几款", "现在家庭装的咖啡豆还有货吗", "现在家长带孩子来喝奶茶可以吗",
    "外卖平台商家用哪个账号登录", "大家里谁会做拉花", "没喝完的酒能打包带回家里吗", "我女儿红加热到多少度",
    # Home words beside a word of the job, or a data question: the store's.
    "未成年跟家里人一起来能卖酒吗", "家里有事能提前走吗", "上周外卖送到家里的订单有多少单", "大盘鸡还有吗",
])
def test_our_house_is_the_chain_and_a_home_word_beside_the_job_is_the_stores(question):
    assert route_by_rules(question).intent != "out_of_scope"
